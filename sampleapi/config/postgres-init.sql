-- The PostgreSQL database of the sample API's keys and plans, prepared by its
-- owner: run once by the postgres image of docker-compose.yml when it creates
-- its data directory (as the superuser), or by hand with psql 15 or later:
--
--   RLBENCH_API_DB_PASSWORD=... psql -d rlbench -f sampleapi/config/postgres-init.sql
--
-- It applies the sample API's migrations (sampleapi/migrations, mounted at
-- /rlbench/migrations in the container) and creates the role the instances log
-- in as, rlbench_api (or $RLBENCH_API_DB_ROLE): it may connect, read api_keys
-- and the migration record, and nothing else: no writes, no CREATE, not a
-- superuser. An administrator adds keys as the owner:
--
--   docker compose exec postgres psql -d rlbench -c "INSERT INTO api_keys
--     (name, key_hash, rate_limit_per_minute, rate_limit_burst, monthly_quota)
--     VALUES ('demo', encode(sha256('demo-pg-key'), 'hex'), 600, 100, 1000000)"
--
-- The role's password comes from $RLBENCH_API_DB_PASSWORD, read by psql
-- itself, so that it is on no command line.

\set ON_ERROR_STOP on
\getenv api_password RLBENCH_API_DB_PASSWORD
\getenv api_role RLBENCH_API_DB_ROLE
\getenv migrations RLBENCH_MIGRATIONS_DIR
\if :{?api_role}
\else
\set api_role rlbench_api
\endif
\if :{?migrations}
\else
\set migrations /rlbench/migrations
\endif
\if :{?api_password}
\else
\warn 'postgres-init.sql: set RLBENCH_API_DB_PASSWORD to the password of the role the sample API logs in as'
SELECT 'RLBENCH_API_DB_PASSWORD is not set'::int;
\endif

BEGIN;
CREATE TABLE IF NOT EXISTS rlbench_migrations (
    version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
\set migration :migrations '/001_api_keys.sql'
\i :migration
-- The version as the sample API's Migrate records it, so that it finds
-- nothing left to apply.
INSERT INTO rlbench_migrations (version) VALUES ('migrations/001_api_keys.sql') ON CONFLICT DO NOTHING;

CREATE ROLE :"api_role" LOGIN PASSWORD :'api_password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
REVOKE ALL ON DATABASE :"DBNAME" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"DBNAME" TO :"api_role";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"api_role";
GRANT SELECT ON api_keys, rlbench_migrations TO :"api_role";
COMMIT;
