// A herald callback receiver in Go, standard library only (Go 1.19 or newer):
//
//	HERALD_CALLBACK_SECRET=the-subscriptions-callbackSecretKey PORT=8443 go run .
//
// It answers every POST: 401 unless both signatures are right (docs/guides/verify-signatures.md), else 204
// at once, then handles the callback once per idempotencyKey. HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are
// set (herald only calls https:// URLs), plain HTTP otherwise (behind your TLS-terminating proxy).
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	secret    = []byte(os.Getenv("HERALD_CALLBACK_SECRET")) // the subscription's callbackSecretKey
	tolerance = int64(5 * 60)                               // refuse a webhook-timestamp further than this (seconds) from now: a replay

	// idempotencyKeys already handled. In production: a unique column in your database, written in the same
	// transaction as the callback's effect, so a callback sent twice (at-least-once delivery) counts once.
	handled   = map[string]bool{}
	handledMu sync.Mutex
)

const maxBodyBytes = 1 << 20

type callback struct {
	IdempotencyKey string `json:"idempotencyKey"`
	Data           struct {
		Event  string          `json:"event"`
		IsTest bool            `json:"isTest"`
		Item   json.RawMessage `json:"item"`
	} `json:"data"`
}

func sign(parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, secret)
	for _, part := range parts {
		mac.Write(part)
	}
	return mac.Sum(nil)
}

// same compares in constant time: how long it takes must not tell an attacker how many bytes were right.
func same(expected, received string) bool {
	return hmac.Equal([]byte(expected), []byte(received))
}

// refusal says why this request is not a callback signed with secret, or "" when it is one.
func refusal(h http.Header, body []byte) string {
	// x-signature: hex HMAC-SHA256 of the raw body. During a secret rotation x-signature-previous carries the
	// old secret's, so a receiver still on the old secret keeps working.
	hexSignature := hex.EncodeToString(sign(body))
	if !same(hexSignature, h.Get("x-signature")) && !same(hexSignature, h.Get("x-signature-previous")) {
		return "x-signature missing or wrong"
	}
	// Standard Webhooks: base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}", whose timestamp is signed.
	id, timestamp, signatures := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || timestamp == "" || signatures == "" {
		return "webhook-id, webhook-timestamp or webhook-signature missing"
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if age := time.Now().Unix() - seconds; err != nil || age > tolerance || age < -tolerance {
		return "webhook-timestamp too far from now"
	}
	expected := "v1," + base64.StdEncoding.EncodeToString(sign([]byte(id+"."+timestamp+"."), body))
	// Space-separated "v1,<base64>" entries (two during a rotation): one that matches is enough.
	for _, signature := range strings.Split(signatures, " ") {
		if same(expected, signature) {
			return ""
		}
	}
	return "webhook-signature wrong"
}

func handle(c callback) {
	// Your work goes here: credit a deposit, update an order... It runs after the answer, so take your time.
	fmt.Printf("callback %s %s %s\n", c.IdempotencyKey, c.Data.Event, c.Data.Item)
}

func receive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	// The raw bytes, as signed: never a re-serialised json.Unmarshal result.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	if why := refusal(r.Header, body); why != "" {
		fmt.Println("refused", why)
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	var c callback
	if err := json.Unmarshal(body, &c); err != nil { // signed by herald: well-formed
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent) // answer at once: herald waits 5 s at most, then retries
	if c.Data.IsTest {
		// A test callback (POST .../test-callback): acknowledge, act on nothing. Check data.isTest, which
		// is signed, not the x-callback-test header, which is not.
		fmt.Println("test callback", c.IdempotencyKey, c.Data.Event)
		return
	}
	handledMu.Lock()
	duplicate := handled[c.IdempotencyKey]
	handled[c.IdempotencyKey] = true
	handledMu.Unlock()
	if duplicate {
		fmt.Println("duplicate", c.IdempotencyKey) // sent again (a retry after a lost answer, a resend): already handled
		return
	}
	go handle(c)
}

func main() {
	if len(secret) == 0 {
		log.Fatal("Set HERALD_CALLBACK_SECRET to the subscription's callbackSecretKey.")
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8443"
	}
	listener, err := net.Listen("tcp", ":"+port)
	if err != nil {
		log.Fatal(err)
	}
	server := &http.Server{Handler: http.HandlerFunc(receive), ReadHeaderTimeout: 10 * time.Second}
	certFile, keyFile := os.Getenv("TLS_CERT_FILE"), os.Getenv("TLS_KEY_FILE")
	scheme := "http"
	if certFile != "" && keyFile != "" {
		scheme = "https"
	}
	fmt.Printf("listening on %s://localhost:%d\n", scheme, listener.Addr().(*net.TCPAddr).Port)
	if scheme == "https" {
		err = server.ServeTLS(listener, certFile, keyFile)
	} else {
		err = server.Serve(listener)
	}
	log.Fatal(err)
}
