-- api_keys holds the sample API's keys, by SHA-256 only, and their plans.
CREATE TABLE IF NOT EXISTS api_keys (
    id                    bigserial        PRIMARY KEY,
    name                  text             NOT NULL DEFAULT '',
    key_hash              text             NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    rate_limit_per_minute double precision NOT NULL CHECK (rate_limit_per_minute > 0),
    rate_limit_burst      bigint           NOT NULL CHECK (rate_limit_burst >= 1),
    monthly_quota         bigint           NOT NULL DEFAULT 0 CHECK (monthly_quota >= 0),
    created_at            timestamptz      NOT NULL DEFAULT now(),
    updated_at            timestamptz      NOT NULL DEFAULT now()
);
