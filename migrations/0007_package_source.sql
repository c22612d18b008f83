-- The source package an installed package was built from (rpm's SOURCERPM: name and
-- [epoch:]version-release), for distributions whose advisories name source packages (Azure Linux,
-- CBL-Mariner). NULL when the database does not say (dpkg and apk list source names already).
ALTER TABLE layer_scan_package ADD COLUMN source_name text, ADD COLUMN source_version text;
