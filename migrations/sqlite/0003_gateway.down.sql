DROP TABLE IF EXISTS usage_counters;
DROP TABLE IF EXISTS idempotency_keys;
