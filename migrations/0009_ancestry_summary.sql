-- What each ancestry's (image's) vulnerabilities add up to, kept so that images can be ranked by
-- risk (the dashboard sorts 100,000 images by it) without reading every image's packages
-- on every page. Counted as the images API counts: each vulnerability once by name, at its highest
-- severity, fixable when an affected package has a fix; known_exploited: of those, the ones in KEV.
-- risk is the sort key, most urgent first: [known exploited, Defcon1, Critical, High, Medium, Low,
-- Negligible, Unknown].
CREATE TABLE ancestry_summary (
  ancestry_id     bigint PRIMARY KEY REFERENCES ancestry (id) ON DELETE CASCADE,
  counts          jsonb NOT NULL,
  known_exploited integer NOT NULL,
  risk            integer[] NOT NULL,
  -- A change may have altered the counts since they were computed (set by the triggers below);
  -- src/images/summaries.ts computes them again.
  stale           boolean NOT NULL DEFAULT false,
  computed_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ancestry_summary_stale ON ancestry_summary (ancestry_id) WHERE stale;

-- Marks stale the summaries of the ancestries holding these feature versions, and wakes the
-- refreshers (NOTIFY is delivered at commit). Every such row is locked, already stale or not: a
-- refresher computing one now holds its lock, so this waits for it and then marks its result
-- stale, instead of a count that missed this change being left fresh. Locks are taken in ancestry
-- order, so two writers never wait for each other in a circle. Rows still stale once locked are
-- left as they are (rewriting them would only add row versions).
CREATE FUNCTION mark_summaries_stale(feature_versions integer[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  held bigint[];
BEGIN
  IF feature_versions IS NULL OR cardinality(feature_versions) = 0 THEN RETURN; END IF;
  SELECT array_agg(ancestry_id) INTO held FROM (
    SELECT s.ancestry_id FROM ancestry_summary s
    WHERE s.ancestry_id IN (SELECT af.ancestry_id FROM ancestry_feature af WHERE af.feature_version_id = ANY (feature_versions))
    ORDER BY s.ancestry_id FOR UPDATE) locked;
  UPDATE ancestry_summary SET stale = true WHERE ancestry_id = ANY (held) AND NOT stale;
  IF FOUND THEN PERFORM pg_notify('tarsier_summaries', ''); END IF;
END $$;

-- Matches added. (Matches are removed only with the retired versions a purge deletes, whose
-- retirement already marked them; a live version's matches are never deleted.)
CREATE FUNCTION summaries_stale_by_affects() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_summaries_stale((SELECT array_agg(DISTINCT feature_version_id) FROM changed_rows));
  RETURN NULL;
END $$;
CREATE TRIGGER affects_inserted_summaries AFTER INSERT ON vulnerability_affects REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_affects();

-- A vulnerability retired or edited in place, or a fix version edited in place: the feature
-- versions its affects rows point at (TG_ARGV[0]: the column of vulnerability_affects naming the row).
CREATE FUNCTION summaries_stale_by_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids integer[];
BEGIN
  EXECUTE format('SELECT array_agg(DISTINCT a.feature_version_id) FROM changed_rows r JOIN vulnerability_affects a ON a.%I = r.id', TG_ARGV[0])
    INTO ids;
  PERFORM mark_summaries_stale(ids);
  RETURN NULL;
END $$;
CREATE TRIGGER vulnerability_updated_summaries AFTER UPDATE ON vulnerability REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_rows('vulnerability_id');
CREATE TRIGGER fixedin_updated_summaries AFTER UPDATE ON vulnerability_fixedin REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_rows('fixedin_id');

-- KEV counts join the kev table: the images holding a live vulnerability that stands for a CVE the
-- catalog added, changed or dropped.
CREATE FUNCTION summaries_stale_by_kev() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_summaries_stale((
    SELECT array_agg(DISTINCT va.feature_version_id)
    FROM vulnerability v JOIN vulnerability_affects va ON va.vulnerability_id = v.id
    WHERE v.deleted_at IS NULL
      AND (v.name IN (SELECT cve FROM changed_rows) OR v.cves && (SELECT array_agg(cve) FROM changed_rows))));
  RETURN NULL;
END $$;
CREATE TRIGGER kev_inserted_summaries AFTER INSERT ON kev REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_kev();
CREATE TRIGGER kev_updated_summaries AFTER UPDATE ON kev REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_kev();
CREATE TRIGGER kev_deleted_summaries AFTER DELETE ON kev REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_kev();

-- Ancestries stored before this migration: computed by the refreshers.
INSERT INTO ancestry_summary (ancestry_id, counts, known_exploited, risk, stale)
SELECT id, '{}', 0, '{}', true FROM ancestry;
