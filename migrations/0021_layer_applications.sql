-- Application packages a layer's own manifests list (npm's package.json, Python's METADATA), each
-- at the file that lists it: a later layer removes one by deleting or rewriting that file, and an
-- image may hold the same package at several places. removed_paths: the paths the layer whites
-- out, and its opaque directories as `dir/`, which remove the inherited packages below them.
CREATE TABLE layer_scan_application (
  layer_scan_id bigint NOT NULL REFERENCES layer_scan (id) ON DELETE CASCADE,
  location      text NOT NULL,
  ecosystem     text NOT NULL,
  name          text NOT NULL,
  version       text NOT NULL,
  PRIMARY KEY (layer_scan_id, location, ecosystem, name, version)
);

ALTER TABLE layer_scan ADD COLUMN removed_paths text[] NOT NULL DEFAULT '{}';
