-- Risk context: FIRST's EPSS scores and CISA's Known Exploited Vulnerabilities, per CVE.
-- They are joined to vulnerabilities when read, never merged into them: EPSS changes daily for
-- almost every CVE, and merged it would make a new version of nearly every vulnerability each day.

-- The CVE ids a vendor advisory (ALAS, RHSA, ELSA) lists, so NVD, EPSS and KEV data reach it.
-- Empty for vulnerabilities named by their CVE.
ALTER TABLE vulnerability ADD COLUMN cves text[] NOT NULL DEFAULT '{}';
CREATE INDEX vulnerability_live_cves ON vulnerability USING gin (cves) WHERE deleted_at IS NULL AND cves <> '{}';

-- The CVE ids a vulnerability stands for: its name when it is one, else the ones it lists.
-- (The same rule as cveIdsOf in src/model/vulnerability.ts.) Inlined by the planner.
CREATE FUNCTION vulnerability_cves(name text, cves text[]) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN name LIKE 'CVE-%' THEN ARRAY[name] ELSE cves END;

CREATE TABLE epss (
  cve        text PRIMARY KEY,
  score      double precision NOT NULL CHECK (score BETWEEN 0 AND 1),
  percentile double precision NOT NULL CHECK (percentile BETWEEN 0 AND 1),
  scored_on  date NOT NULL
);
-- Images filtered by a minimum score (min_epss=) look CVEs up by score.
CREATE INDEX epss_score ON epss (score);

CREATE TABLE kev (
  cve                           text PRIMARY KEY,
  vendor_project                text NOT NULL,
  product                       text NOT NULL,
  vulnerability_name            text NOT NULL,
  date_added                    date NOT NULL,
  due_date                      date,
  known_ransomware_campaign_use text NOT NULL,
  required_action               text NOT NULL
);

-- Cached layer reports show EPSS and KEV: a committed change to either drops them on every
-- replica ('e:' on the channel of migration 0003), once per statement that changed rows.
CREATE FUNCTION announce_risk_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM changed_rows) THEN PERFORM pg_notify('tarsier_report_changes', 'e:'); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER epss_inserted AFTER INSERT ON epss REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();
CREATE TRIGGER epss_updated AFTER UPDATE ON epss REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();
CREATE TRIGGER epss_deleted AFTER DELETE ON epss REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();
CREATE TRIGGER kev_inserted AFTER INSERT ON kev REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();
CREATE TRIGGER kev_updated AFTER UPDATE ON kev REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();
CREATE TRIGGER kev_deleted AFTER DELETE ON kev REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_risk_change();

-- A notification of a KEV change (notifier.onenrichment): both sides are the live version, and
-- this says what changed ({"kev": {"old": …, "new": …}}); NULL for a change of the vulnerability.
ALTER TABLE notification ADD COLUMN risk_change jsonb;

-- Amazon's, Red Hat's and Oracle's advisories now list their CVEs (and get NVD's scores through
-- them): their next run downloads everything again and writes quietly, as for migration 0006.
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name IN ('amzn', 'rhel', 'oracle') AND last_success_at IS NOT NULL;
