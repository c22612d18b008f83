-- Report invalidation. Each replica caches a JSON fragment per feature version (the feature and
-- the vulnerabilities affecting it) and whole layer reports assembled from them. A committed
-- change tells every replica exactly what went stale, on the channel tarsier_report_changes:
--   f:<ids>  the matches of these feature versions changed (affects rows added, removed or
--            re-pointed; a vulnerability they point at was changed or retired)
--   l:<ids>  these layers changed (re-indexed, their namespace set, deleted)
-- Statement-level triggers make it hold for every writer (API, updaters, imports, a DBA's SQL),
-- and NOTIFY is transactional: delivered at commit, in commit order, never for a rollback.
-- This replaces the data_generation counter, which made any write invalidate every report.

-- NOTIFY payloads are limited to 8000 bytes: ids go out in chunks (1000 ids of up to 7 digits).
CREATE FUNCTION notify_report_changes(kind text, ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  chunk constant integer := 1000;
BEGIN
  IF ids IS NULL THEN RETURN; END IF;
  FOR i IN 1 .. coalesce(array_length(ids, 1), 0) BY chunk LOOP
    PERFORM pg_notify('tarsier_report_changes', kind || ':' || array_to_string(ids[i : i + chunk - 1], ','));
  END LOOP;
END $$;

-- A statement-level trigger: announces, as TG_ARGV[0] ('f' or 'l'), the distinct values of column
-- TG_ARGV[1] in the rows the statement inserted, deleted or updated (old and new values).
CREATE FUNCTION announce_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed text := CASE TG_OP
    WHEN 'INSERT' THEN format('SELECT %I FROM new_rows', TG_ARGV[1])
    WHEN 'DELETE' THEN format('SELECT %I FROM old_rows', TG_ARGV[1])
    ELSE format('SELECT %1$I FROM old_rows UNION SELECT %1$I FROM new_rows', TG_ARGV[1]) END;
  ids bigint[];
BEGIN
  EXECUTE format('SELECT array_agg(DISTINCT id) FROM (%s) changed (id)', changed) INTO ids;
  PERFORM notify_report_changes(TG_ARGV[0], ids);
  RETURN NULL;
END $$;

-- A statement-level trigger on a table vulnerability_affects refers to: announces the feature
-- versions whose affects rows point (column TG_ARGV[0]) at the rows the statement updated.
CREATE FUNCTION announce_affected_features() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[];
BEGIN
  EXECUTE format(
    'SELECT array_agg(DISTINCT a.feature_version_id) FROM new_rows r JOIN vulnerability_affects a ON a.%I = r.id',
    TG_ARGV[0]) INTO ids;
  PERFORM notify_report_changes('f', ids);
  RETURN NULL;
END $$;

-- Matches: affects rows added, removed or re-pointed.
CREATE TRIGGER affects_inserted AFTER INSERT ON vulnerability_affects REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('f', 'feature_version_id');
CREATE TRIGGER affects_deleted AFTER DELETE ON vulnerability_affects REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('f', 'feature_version_id');
CREATE TRIGGER affects_updated AFTER UPDATE ON vulnerability_affects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('f', 'feature_version_id');

-- A vulnerability changed in place (retired by a new version, or edited by hand), or a fix version
-- edited in place: every feature version it affects shows it differently now. A deletion cascades
-- to the affects rows, whose trigger announces it.
CREATE TRIGGER vulnerability_updated AFTER UPDATE ON vulnerability REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_affected_features('vulnerability_id');
CREATE TRIGGER fixedin_updated AFTER UPDATE ON vulnerability_fixedin REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_affected_features('fixedin_id');

-- Layers: a new layer invalidates nothing (no report of it exists yet), so inserts are not
-- announced; a re-indexed layer rewrites its diff (delete, insert) and its row, a deleted one
-- disappears with its descendants.
CREATE TRIGGER layer_diff_deleted AFTER DELETE ON layer_diff REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('l', 'layer_id');
CREATE TRIGGER layer_updated AFTER UPDATE ON layer REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('l', 'id');
CREATE TRIGGER layer_deleted AFTER DELETE ON layer REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_changed_rows('l', 'id');

DROP SEQUENCE data_generation;
