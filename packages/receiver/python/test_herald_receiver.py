"""Tests of the Python receiver kit, run by packages/receiver/test/kit.test.ts (npm test) with:

    HERALD_SIGNED_VECTOR='{"body": ..., "headers": {...}, "secret": ..., "now": ...}'  (a callback signed by herald)
    HERALD_TEST_DATABASE_URL=postgresql://...  (a fresh database, for the inbox; needs psycopg 3 or psycopg2)

The inbox tests are skipped, saying why, when no PostgreSQL driver is importable; with
HERALD_REQUIRE_PG_DRIVER=1 (kit.test.ts sets it under CI) they fail instead.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import herald_receiver as kit  # noqa: E402

VECTOR = json.loads(os.environ.get("HERALD_SIGNED_VECTOR", "null"))


def connect():
    url = os.environ.get("HERALD_TEST_DATABASE_URL")
    try:
        import psycopg  # noqa: F401

        return psycopg.connect(url)
    except ImportError:
        pass
    try:
        import psycopg2

        return psycopg2.connect(url)
    except ImportError:
        return None


class VerifyCallback(unittest.TestCase):
    def test_accepts_what_herald_signed(self):
        event = kit.verify_callback(VECTOR["body"].encode(), VECTOR["headers"], secret=VECTOR["secret"], now=VECTOR["now"])
        self.assertEqual(event["idempotencyKey"], json.loads(VECTOR["body"])["idempotencyKey"])

    def test_refuses_tampered_unsigned_stale_and_other_secret(self):
        body, headers, secret, now = VECTOR["body"].encode(), VECTOR["headers"], VECTOR["secret"], VECTOR["now"]
        cases = {
            "bad_signature": (body.replace(b"BLOCKCHAIN", b"BLOCKCHAIM"), headers, [secret], now),
            "missing_signature": (body, {k: v for k, v in headers.items() if k != "webhook-signature"}, [secret], now),
            "stale_timestamp": (body, headers, [secret], now + 301),
        }
        for code, (b, h, s, n) in cases.items():
            with self.assertRaises(kit.VerificationError) as caught:
                kit.verify_callback(b, h, secrets=s, now=n)
            self.assertEqual(caught.exception.code, code)
        with self.assertRaises(kit.VerificationError):
            kit.verify_callback(body, headers, secret="another", now=now)

    def test_secret_rotation_any_of_several_secrets(self):
        event = kit.verify_callback(VECTOR["body"], VECTOR["headers"], secrets=["the-next-one", VECTOR["secret"]], now=VECTOR["now"])
        self.assertIn("data", event)

    def test_headers_in_any_case(self):
        upper = {k.upper(): v for k, v in VECTOR["headers"].items()}
        self.assertIsNone(kit.refusal(VECTOR["body"], upper, [VECTOR["secret"]], now=VECTOR["now"]))


class Inbox(unittest.TestCase):
    def setUp(self):
        self.conn = connect()
        if self.conn is None:
            if os.environ.get("HERALD_REQUIRE_PG_DRIVER") == "1":
                self.fail(f"no PostgreSQL driver for {sys.executable} (psycopg 3 or psycopg2): apt-get install -y python3-psycopg")
            self.skipTest("no PostgreSQL driver for Python here (psycopg 3 or psycopg2)")
        with self.conn.cursor() as cur:
            cur.execute(kit.inbox_schema())
            cur.execute("CREATE TABLE IF NOT EXISTS effects (key text PRIMARY KEY)")
            cur.execute("TRUNCATE herald_inbox, effects")
        self.conn.commit()

    def tearDown(self):
        if self.conn is not None:
            self.conn.close()

    def effects(self):
        with self.conn.cursor() as cur:
            cur.execute("SELECT key FROM effects ORDER BY key")
            keys = [r[0] for r in cur.fetchall()]
        self.conn.commit()
        return keys

    def test_each_effect_once_and_retractions_undo(self):
        def effect(cur, event):
            cur.execute("INSERT INTO effects (key) VALUES (%s)", (event["idempotencyKey"],))

        def undo(cur, event):
            cur.execute("DELETE FROM effects WHERE key = %s", (event["idempotencyKey"],))

        event = {"idempotencyKey": "k1", "referenceId": "r", "data": {"event": "BLOCK_MINED"}}
        self.assertEqual(kit.handle_once(self.conn, event, effect, undo), "applied")
        self.assertEqual(kit.handle_once(self.conn, event, effect, undo), "duplicate")
        self.assertEqual(self.effects(), ["k1"])

        def failing(cur, event):
            effect(cur, event)
            raise RuntimeError("the handler failed half way")

        with self.assertRaises(RuntimeError):
            kit.handle_once(self.conn, {**event, "idempotencyKey": "k2"}, failing)
        self.assertEqual(self.effects(), ["k1"])  # rolled back: neither the effect nor the key
        self.assertEqual(kit.handle_once(self.conn, {**event, "idempotencyKey": "k2"}, effect), "applied")

        retraction = {**event, "retracted": True}
        self.assertEqual(kit.handle_once(self.conn, retraction, effect, undo), "retracted")
        self.assertEqual(kit.handle_once(self.conn, retraction, effect, undo), "ignored")
        self.assertEqual(kit.handle_once(self.conn, event, effect, undo), "ignored")  # a late copy
        self.assertEqual(self.effects(), ["k2"])
        self.assertEqual(kit.handle_once(self.conn, {**event, "reinstated": True}, effect, undo), "applied")
        self.assertEqual(self.effects(), ["k1", "k2"])
        self.assertEqual(kit.handle_once(self.conn, {**event, "idempotencyKey": "t", "data": {"isTest": True}}, effect), "test")


if __name__ == "__main__":
    unittest.main(verbosity=2)
