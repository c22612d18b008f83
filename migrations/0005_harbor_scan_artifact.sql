-- What Harbor's scan request named beyond the repository and digest, so that any replica can echo
-- the artifact in the report as Harbor sent it: the tag ("" or absent for an untagged artifact) and
-- the manifest's media type. Neither is a credential.
ALTER TABLE harbor_scan ADD COLUMN tag text, ADD COLUMN mime_type text;
