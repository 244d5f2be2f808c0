"""A herald callback receiver in Python, standard library only (3.8 or newer) and the receiver kit's signature check:

    HERALD_CALLBACK_SECRET=the-subscriptions-callbackSecretKey PORT=8443 python3 receiver.py

It answers every POST: 401 unless both signatures are right (docs/guides/verify-signatures.md), else 204
at once, then handles the callback once per idempotencyKey. HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are
set (herald only calls https:// URLs), plain HTTP otherwise (behind your TLS-terminating proxy).
"""
import json
import os
import queue
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "packages", "receiver", "python"))
import herald_receiver  # noqa: E402  (the receiver kit, from this repository)

SECRET = os.environ.get("HERALD_CALLBACK_SECRET", "").encode()  # the subscription's callbackSecretKey
PORT = int(os.environ.get("PORT", "8443"))
TOLERANCE_SECONDS = 5 * 60  # refuse a webhook-timestamp further than this from now: a replay
MAX_BODY_BYTES = 1024 * 1024
if not SECRET:
    sys.exit("Set HERALD_CALLBACK_SECRET to the subscription's callbackSecretKey.")

# idempotencyKeys already handled. In production: a unique column in your database, written in the same
# transaction as the callback's effect, so a callback sent twice (at-least-once delivery) counts once.
handled = set()
handled_lock = threading.Lock()
work = queue.Queue()


def refusal(headers, body):
    """Why this request is not a callback signed with SECRET (a sentence), or None when it is one.

    Both signatures, in constant time, the timestamp within TOLERANCE_SECONDS: the receiver kit's check
    (packages/receiver/python/herald_receiver.py, docs/guides/verify-signatures.md), imported from this
    repository. In a project of your own: copy herald_receiver.py beside your code.
    """
    why = herald_receiver.refusal(body, headers, [SECRET], TOLERANCE_SECONDS)
    return str(why) if why else None


def handle(callback):
    # Your work goes here: credit a deposit, update an order... It runs after the answer, so take your time.
    print(f"callback {callback['idempotencyKey']} {callback['data']['event']} {json.dumps(callback['data']['item'], separators=(',', ':'))}", flush=True)


def worker():
    while True:
        handle(work.get())


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: herald reuses its connections

    def answer(self, status, text=""):
        data = text.encode()
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self.answer(413)
        body = self.rfile.read(length)  # the raw bytes, as signed: never a re-serialised json.loads result
        why = refusal(self.headers, body)
        if why:
            print(f"refused {why}", flush=True)
            return self.answer(401, why)
        callback = json.loads(body)  # signed by herald: well-formed
        self.answer(204)  # answer at once: herald waits 5 s at most, then retries
        key = callback["idempotencyKey"]
        if callback["data"].get("isTest"):
            # A test callback (POST .../test-callback): acknowledge, act on nothing. Check data.isTest,
            # which is signed, not the x-callback-test header, which is not.
            print(f"test callback {key} {callback['data']['event']}", flush=True)
            return
        with handled_lock:
            duplicate = key in handled
            handled.add(key)
        if duplicate:
            print(f"duplicate {key}", flush=True)  # sent again (a retry after a lost answer, a resend): already handled
        else:
            work.put(callback)

    def log_message(self, format, *args):
        pass  # one line per callback above is enough


server = ThreadingHTTPServer(("", PORT), Receiver)
tls = os.environ.get("TLS_CERT_FILE") and os.environ.get("TLS_KEY_FILE")
if tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["TLS_CERT_FILE"], os.environ["TLS_KEY_FILE"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
threading.Thread(target=worker, daemon=True).start()
print(f"listening on {'https' if tls else 'http'}://localhost:{server.server_address[1]}", flush=True)
server.serve_forever()
