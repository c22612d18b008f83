-- A fixed-in entry may name a source package (Red Hat's VEX names packages without a fix by their
-- source rpm: vim for vim-minimal, vim-enhanced, ...): it applies to every installed package built
-- from that source, compared by the source's version.
ALTER TABLE vulnerability_fixedin ADD COLUMN source boolean NOT NULL DEFAULT false;

-- The source package an installed version was built from (rpm's SOURCERPM), where the namespace's
-- records may name sources (RHEL); NULL elsewhere and when the database does not say. Not part of
-- the key: a package's name, version and architectures determine the build, hence its source.
ALTER TABLE feature_version ADD COLUMN source_name text, ADD COLUMN source_version text;
CREATE INDEX feature_version_source_name ON feature_version (source_name) WHERE source_name IS NOT NULL;

-- The versions already stored get their source from the layer scans that listed them.
UPDATE feature_version fv SET source_name = s.source_name, source_version = s.source_version
FROM (
  SELECT DISTINCT ON (fv2.id) fv2.id, p.source_name, p.source_version
  FROM feature_version fv2
  JOIN feature f ON f.id = fv2.feature_id
  JOIN namespace n ON n.id = f.namespace_id AND n.name LIKE 'rhel:%'
  JOIN layer_scan_package p ON p.format = 'rpm' AND p.name = f.name AND p.version = fv2.version
    AND coalesce(p.arches, '{}') = fv2.arches AND p.source_name IS NOT NULL
  ORDER BY fv2.id
) s
WHERE fv.id = s.id;

-- Red Hat's VEX source rewrites its records once, now marking the entries that name source
-- packages, which links them to the packages built from those: its next run downloads everything
-- again and writes no notifications (as in 0006).
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name = 'rhel-vex' AND last_success_at IS NOT NULL;
