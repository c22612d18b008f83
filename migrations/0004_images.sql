-- Images: what registries hold, by repository and manifest digest. The contents of an image are
-- the ancestry named by its manifest digest (the ancestry API's rule 2): one per digest, shared by
-- every repository that holds the same manifest, so a layer or an image pushed twice is scanned once.
CREATE TABLE image (
  id           bigserial PRIMARY KEY,
  -- The registry as references write it (docker.io, ghcr.io, localhost:5000).
  registry     text NOT NULL,
  repository   text NOT NULL,
  digest       text NOT NULL,
  -- os/architecture[/variant] from the index entry or the image config.
  platform     text NOT NULL,
  media_type   text NOT NULL,
  -- The index (manifest list) the image was reached through, when it was.
  index_digest text,
  first_seen   timestamptz NOT NULL DEFAULT now(),
  last_seen    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (registry, repository, digest)
);
CREATE INDEX image_digest ON image (digest);
CREATE INDEX image_repository ON image (repository, id);

-- A tag names one image per platform of its repository. A push that moves a tag takes it off the
-- old images, which stay (untagged) until deleted or past clair.images.untaggedretention.
CREATE TABLE image_tag (
  image_id bigint NOT NULL REFERENCES image (id) ON DELETE CASCADE,
  tag      text NOT NULL,
  PRIMARY KEY (image_id, tag)
);
CREATE INDEX image_tag_tag ON image_tag (tag, image_id);

-- Scans Harbor asked for (Pluggable Scanner API), by the id the scan answer gave. The registry
-- authorization Harbor sent is never stored: it lives in the memory of the replica that runs the
-- scan (owner), and a scan whose owner stopped before finishing is reported failed.
CREATE TABLE harbor_scan (
  id         uuid PRIMARY KEY,
  registry   text NOT NULL,
  repository text NOT NULL,
  digest     text NOT NULL,
  state      text NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
  error      text,
  owner      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX harbor_scan_created ON harbor_scan (created_at);
