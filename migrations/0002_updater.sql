-- Updater scheduling and run bookkeeping, and NVD enrichment.

ALTER TABLE updater_state
  ADD COLUMN next_run_at          timestamptz,
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
  ADD COLUMN last_duration_ms     integer,
  ADD COLUMN last_changed         integer NOT NULL DEFAULT 0;

-- NVD's CVSS data per CVE. Applied to every updater-written vulnerability of that name when it is
-- written, and re-applied when NVD's data for the CVE changes.
CREATE TABLE nvd_enrichment (
  cve      text PRIMARY KEY,
  nvd      jsonb NOT NULL,
  severity severity NOT NULL
);

-- Live vulnerabilities by name, across namespaces (enrichment re-application).
CREATE INDEX vulnerability_live_by_name ON vulnerability (name) WHERE deleted_at IS NULL;

-- The severity the source itself gave (Unknown when it gave none): NVD's severity is used only then,
-- and must be re-derivable when NVD's data changes.
ALTER TABLE vulnerability ADD COLUMN source_severity severity;
