-- The indexer's fingerprint (INDEXER_FINGERPRINT, src/ecosystems/index.ts): a digest of the catalog
-- rows the release detectors name layers by (os-release naming, release-file lines), kept with each
-- layer's and layer scan's indexing beside indexed_by_version. A layer indexed by the current version under other rows is indexed again when
-- posted again, as after a version bump, and a catalog row needs no bump: the version stays what the
-- API shows (IndexedByVersion). NULL: indexed by a process that did not keep it.
--
-- Until now a catalog change that renamed layers bumped the os-release detector's version, and a
-- layer indexed by the current version (15) counted as indexed under the current rows. The existing
-- rows get the fingerprint of those rows, '8262bdc0fc07f73f', so they still do and nothing is indexed
-- again for this change; rows of older versions are indexed again anyway. The default is added, then
-- dropped, so that existing rows take it without the tables being rewritten.
ALTER TABLE layer ADD COLUMN indexer_fingerprint text DEFAULT '8262bdc0fc07f73f';
ALTER TABLE layer ALTER COLUMN indexer_fingerprint DROP DEFAULT;
ALTER TABLE layer_scan ADD COLUMN indexer_fingerprint text DEFAULT '8262bdc0fc07f73f';
ALTER TABLE layer_scan ALTER COLUMN indexer_fingerprint DROP DEFAULT;
