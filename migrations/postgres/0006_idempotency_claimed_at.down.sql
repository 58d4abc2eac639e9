DROP INDEX IF EXISTS idempotency_keys_claimed;
