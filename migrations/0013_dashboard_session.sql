-- Dashboard sign-ins (src/store/dashboard-sessions.ts). The browser's cookie carries a random id;
-- this table holds only its SHA-256, so reading the table opens no session. A session names the
-- configured credential it was opened with by that credential's fingerprint (src/api/auth.ts): it
-- ends when the credential is no longer configured. valid_until moves forward with use (the idle
-- limit), never past expires_at (the absolute limit, or a JWT's own expiry).
CREATE TABLE dashboard_session (
  id_hash     bytea PRIMARY KEY,
  credential  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  valid_until timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  CHECK (valid_until <= expires_at)
);
-- Ended sessions are deleted by valid_until.
CREATE INDEX dashboard_session_valid_until ON dashboard_session (valid_until);
