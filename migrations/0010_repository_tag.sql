-- What each tag of a repository names — an image manifest, or an index with one manifest per
-- platform — as the registry said it the last time Tarsier asked (src/images/records.ts). Written
-- only under the repository's lock, right after asking the registry, so the newest answer is the
-- one kept whatever order scans finish in. image_tag follows it: a tag is on the images whose
-- manifest it names, or that were reached through the index it names. A tag the registry deleted
-- (or that names a manifest it deleted) has no row.
CREATE TABLE repository_tag (
  registry   text NOT NULL,
  repository text NOT NULL,
  tag        text NOT NULL,
  digest     text NOT NULL,
  PRIMARY KEY (registry, repository, tag)
);
CREATE INDEX repository_tag_digest ON repository_tag (registry, repository, digest);

-- The tags recorded so far: each names what its most recently seen image was reached through (its
-- index, else its manifest).
INSERT INTO repository_tag (registry, repository, tag, digest)
SELECT DISTINCT ON (i.registry, i.repository, t.tag) i.registry, i.repository, t.tag, coalesce(i.index_digest, i.digest)
FROM image_tag t JOIN image i ON i.id = t.image_id
ORDER BY i.registry, i.repository, t.tag, i.last_seen DESC, i.id DESC;
