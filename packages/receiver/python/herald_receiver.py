"""The herald receiver kit for Python (packages/receiver/README.md): verify callbacks, apply each event once.

verify_callback checks both signatures of a callback (docs/guides/verify-signatures.md) with the standard
library only. handle_once is the inbox for PostgreSQL: it takes any DB-API connection with the %s parameter
style (psycopg 3 or psycopg2) and needs no import of its own.
"""
import base64
import hashlib
import hmac
import json
import re
import time

DEFAULT_TOLERANCE_SECONDS = 5 * 60  # a webhook-timestamp further from now than this is refused: a replay

__all__ = ["DEFAULT_TOLERANCE_SECONDS", "VerificationError", "refusal", "verify_callback", "inbox_schema", "handle_once"]


class VerificationError(Exception):
    """Why a request is not a genuine callback. `code` is stable; the message is for people."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _same(expected, received):
    """Constant time: how long it takes must not tell an attacker how many characters were right."""
    return hmac.compare_digest(expected.encode(), (received or "").encode())


def _header(headers, name):
    """A header from a dict in any case, or from an object with .get (http.server's, Flask's, Django's)."""
    value = headers.get(name)
    if value is None and isinstance(headers, dict):
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def refusal(raw_body, headers, secrets, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, now=None):
    """Why raw_body with headers is not a callback signed with one of secrets (a VerificationError), or None.

    x-signature: hex HMAC-SHA256 of the raw body (during a rotation herald also sends x-signature-previous,
    the old secret's). Standard Webhooks: base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}",
    space-separated "v1,..." entries, whose timestamp must be within tolerance_seconds of now.
    """
    body = raw_body.encode() if isinstance(raw_body, str) else bytes(raw_body)
    signature = _header(headers, "x-signature")
    previous = _header(headers, "x-signature-previous")
    if not signature:
        return VerificationError("missing_signature", "x-signature missing")
    webhook_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        return VerificationError("missing_signature", "webhook-id, webhook-timestamp or webhook-signature missing")
    current = time.time() if now is None else now
    if not re.fullmatch(r"[0-9]+", timestamp) or abs(current - int(timestamp)) > tolerance_seconds:
        return VerificationError("stale_timestamp", "webhook-timestamp too far from now")
    hex_matched = webhook_matched = False
    # Several secrets: the current one and, while you rotate, the one before (either may sign).
    for secret in secrets:
        key = secret.encode() if isinstance(secret, str) else secret
        hex_signature = hmac.new(key, body, hashlib.sha256).hexdigest()
        if _same(hex_signature, signature) or _same(hex_signature, previous):
            hex_matched = True
        signed = f"{webhook_id}.{timestamp}.".encode() + body
        expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        if any(_same(expected, s) for s in signatures.split(" ")):
            webhook_matched = True
    if not hex_matched:
        return VerificationError("bad_signature", "x-signature wrong")
    if not webhook_matched:
        return VerificationError("bad_signature", "webhook-signature wrong")
    return None


def verify_callback(raw_body, headers, secret=None, secrets=None, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, now=None):
    """The callback, parsed, when raw_body (the bytes as received) and headers are signed with secret (or one
    of secrets); otherwise raises VerificationError."""
    keys = list(secrets) if secrets is not None else ([secret] if secret is not None else [])
    if not keys:
        raise TypeError("verify_callback needs secret or secrets (the subscription's callbackSecretKey)")
    why = refusal(raw_body, headers, keys, tolerance_seconds, now)
    if why:
        raise why
    try:
        return json.loads(raw_body)
    except ValueError:
        raise VerificationError("bad_body", "the signed body is not JSON") from None


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")


def inbox_schema(table="herald_inbox"):
    """The inbox table: one row per idempotencyKey handled, written in the transaction of its effect."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (idempotency_key text PRIMARY KEY, reference_id text NOT NULL, "
        "retracted boolean NOT NULL DEFAULT false, handled_at timestamptz NOT NULL DEFAULT now())"
    )


def handle_once(conn, event, fn, on_retract=None, table="herald_inbox"):
    """Runs fn(cursor, event) and records event["idempotencyKey"] in one transaction of conn, unless the key is
    recorded already. The same outcomes as the Node kit's handleOnce: "applied", "duplicate", "retracted"
    (a retraction of an applied event: on_retract(cursor, event) ran), "ignored" (a retraction of an event
    never applied, or a late copy of a retracted one; an entry with reinstated: true is applied again) and
    "test" (a test callback). If fn or on_retract raises, the transaction is rolled back and the error raised.
    """
    if not _IDENTIFIER.fullmatch(table):
        raise TypeError(f"table must be a plain SQL name, not {table!r}")
    if (event.get("data") or {}).get("isTest"):
        return "test"
    key = event.get("idempotencyKey")
    if not key:
        raise TypeError("the event has no idempotencyKey")
    reference = str(event.get("referenceId") or "")
    try:
        with conn.cursor() as cur:
            if event.get("retracted"):
                cur.execute(
                    f"UPDATE {table} SET retracted = true, handled_at = now() WHERE idempotency_key = %s AND NOT retracted RETURNING idempotency_key",
                    (key,),
                )
                if cur.fetchone() is None:
                    cur.execute(
                        f"INSERT INTO {table} (idempotency_key, reference_id, retracted) VALUES (%s, %s, true) ON CONFLICT DO NOTHING",
                        (key, reference),
                    )
                    outcome = "ignored"
                else:
                    if on_retract is None:
                        raise TypeError(f"a retraction of {key} needs on_retract (the undoing of its effect)")
                    on_retract(cur, event)
                    outcome = "retracted"
            else:
                cur.execute(
                    f"INSERT INTO {table} (idempotency_key, reference_id) VALUES (%s, %s) "
                    f"ON CONFLICT (idempotency_key) DO UPDATE SET retracted = false, handled_at = now() WHERE {table}.retracted AND %s "
                    "RETURNING idempotency_key",
                    (key, reference, event.get("reinstated") is True),
                )
                if cur.fetchone() is None:
                    cur.execute(f"SELECT retracted FROM {table} WHERE idempotency_key = %s", (key,))
                    row = cur.fetchone()
                    outcome = "ignored" if row and row[0] else "duplicate"
                else:
                    fn(cur, event)
                    outcome = "applied"
        conn.commit()
        return outcome
    except BaseException:
        conn.rollback()
        raise
