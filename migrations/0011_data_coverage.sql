-- What vulnerability data each namespace has, so that no answer says "no vulnerabilities" where
-- nothing was there to look at.

-- When a source's data was last known to be current upstream: an online run's success, or the
-- time the exporting installation last updated it, for data imported from a bundle (an import
-- made today of a month-old bundle is a month old).
ALTER TABLE updater_state ADD COLUMN data_updated_at timestamptz;
UPDATE updater_state SET data_updated_at = last_success_at;

-- Who wrote a namespace's live records ('' for the API) and when: which sources feed a namespace
-- is a few probes of this index (a skip scan), its record count an index-only count, and the API's
-- last write the last entry of its range.
CREATE INDEX vulnerability_live_writer ON vulnerability (namespace_id, (coalesce(updater, '')), created_at)
  WHERE deleted_at IS NULL;

-- The namespaces an ancestry's (image's) packages are matched in: fixed when it is built, read
-- by the image lists to tell an image whose data is missing without reading its packages.
ALTER TABLE ancestry ADD COLUMN namespaces text[] NOT NULL DEFAULT '{}';
UPDATE ancestry a SET namespaces = coalesce((
  SELECT array_agg(DISTINCT n.name ORDER BY n.name)
  FROM ancestry_feature af
  JOIN feature_version fv ON fv.id = af.feature_version_id
  JOIN feature f ON f.id = fv.feature_id
  JOIN namespace n ON n.id = f.namespace_id
  WHERE af.ancestry_id = a.id), '{}');
