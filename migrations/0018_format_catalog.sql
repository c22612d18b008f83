-- Which package formats exist is decided by the format catalog (src/ecosystems/formats.ts), not by
-- the schema: a format added there needs no migration. Every write of a namespace's format passes
-- the catalog's check first (the API's and a bundle's formats; updaters and the indexer take theirs
-- from the catalogs), so the lists these constraints repeated are dropped.
ALTER TABLE namespace DROP CONSTRAINT namespace_version_format_check;
ALTER TABLE match_revision DROP CONSTRAINT match_revision_version_format_check;
