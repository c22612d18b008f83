-- A source may give one package several fixed-in entries in one record, each an alternative under its
-- own conditions (src/model/fixes.ts): the package architectures it is limited to (arches, NULL:
-- every one), a lower bound (affected_above: only later versions are affected) and, without a fix, an
-- inclusive upper bound (affected_through). A package is affected when one of its entries affects it;
-- the link (vulnerability_affects.fixedin_id) names the entry that says how (its FixedBy).
ALTER TABLE vulnerability_fixedin
  DROP CONSTRAINT vulnerability_fixedin_vulnerability_id_feature_id_key,
  ADD COLUMN arches text[],
  ADD COLUMN affected_above text,
  ADD COLUMN affected_through text;
CREATE INDEX vulnerability_fixedin_vulnerability ON vulnerability_fixedin (vulnerability_id, feature_id);

-- The architectures an installed package is installed for (rpm's ARCH; both copies of a multilib
-- package), which entries limited to some architectures are matched against. Empty when the database
-- does not say: dpkg and apk, and rpm layers indexed before this, whose matches stay as they were (for
-- every architecture) until they are indexed again. A package of the same version installed for
-- other architectures is another feature version.
ALTER TABLE feature_version
  ADD COLUMN arches text[] NOT NULL DEFAULT '{}',
  DROP CONSTRAINT feature_version_feature_id_version_key,
  ADD CONSTRAINT feature_version_feature_id_version_arches_key UNIQUE (feature_id, version, arches);
ALTER TABLE layer_scan_package ADD COLUMN arches text[];

-- The sources whose parsers now give architectures, bounds and several entries per package rewrite
-- their records once: their next run downloads everything again and writes no notifications (as in
-- 0006: what a parser change adds to unchanged advisories is not news).
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name IN ('rhel', 'rhel-vex', 'oracle', 'amzn', 'suse', 'azurelinux', 'photon') AND last_success_at IS NOT NULL;
