-- Tarsier schema, version 1.
--
-- Shape follows Clair v2's store (namespaces, features, feature versions, layers kept as diffs
-- against their parent, versioned vulnerabilities, an "affects" relation) with the indexes that
-- Clair was missing for the layer report and the notification fan-out, plus the tables the
-- ancestry API, the updaters and the notifier need.

CREATE TYPE severity AS ENUM ('Unknown', 'Negligible', 'Low', 'Medium', 'High', 'Critical', 'Defcon1');
CREATE TYPE modification AS ENUM ('add', 'del');

-- A distribution release such as debian:12; its version format decides how versions compare.
CREATE TABLE namespace (
  id             serial PRIMARY KEY,
  name           text NOT NULL UNIQUE,
  version_format text NOT NULL CHECK (version_format IN ('dpkg', 'rpm', 'apk'))
);

-- A package name within a namespace (the source package for dpkg, the origin for apk).
CREATE TABLE feature (
  id           serial PRIMARY KEY,
  namespace_id integer NOT NULL REFERENCES namespace (id),
  name         text NOT NULL,
  UNIQUE (namespace_id, name)
);

-- One installed version of a feature. The UNIQUE index also serves "all versions of feature F"
-- when a vulnerability's fixed-in entries are linked.
CREATE TABLE feature_version (
  id         serial PRIMARY KEY,
  feature_id integer NOT NULL REFERENCES feature (id),
  version    text NOT NULL,
  UNIQUE (feature_id, version)
);

-- What one layer's own files hold, whatever its parent: the namespace its release files name, and
-- for each package format whether the layer holds the database ('present') or deletes it with a
-- whiteout ('deleted'), with the packages it lists. A format absent from package_dbs is inherited.
-- v1 layers (key 'v1/<name>') and the ancestry API's layers (key = layer hash) both refer to scans.
CREATE TABLE layer_scan (
  id                 bigserial PRIMARY KEY,
  key                text NOT NULL UNIQUE,
  indexed_by_version integer NOT NULL,
  namespace          text,
  package_dbs        jsonb NOT NULL DEFAULT '{}',
  created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE layer_scan_package (
  layer_scan_id bigint NOT NULL REFERENCES layer_scan (id) ON DELETE CASCADE,
  format        text NOT NULL,
  name          text NOT NULL,
  version       text NOT NULL,
  PRIMARY KEY (layer_scan_id, format, name, version)
);

-- v1 layers. A layer's features are stored as a diff against its parent (layer_diff), derived
-- from its scan and its parent's features; the namespace is the detected one, else the parent's.
-- Deleting a layer deletes its descendants.
CREATE TABLE layer (
  id                 bigserial PRIMARY KEY,
  name               text NOT NULL UNIQUE,
  parent_id          bigint REFERENCES layer (id) ON DELETE CASCADE,
  namespace_id       integer REFERENCES namespace (id),
  scan_id            bigint NOT NULL REFERENCES layer_scan (id),
  indexed_by_version integer NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX layer_parent_id ON layer (parent_id);
CREATE INDEX layer_scan_id ON layer (scan_id);

CREATE TABLE layer_diff (
  layer_id           bigint NOT NULL REFERENCES layer (id) ON DELETE CASCADE,
  feature_version_id integer NOT NULL REFERENCES feature_version (id),
  modification       modification NOT NULL,
  PRIMARY KEY (layer_id, feature_version_id)
);
-- Notification fan-out: "which layers' own diff adds feature version X", in layer-id order so
-- that pages are index range scans (Clair needed quay/clair#278 and #281 for this query).
CREATE INDEX layer_diff_added ON layer_diff (feature_version_id, layer_id) WHERE modification = 'add';

-- Vulnerabilities are versioned: a change soft-deletes the live row (deleted_at) and inserts a
-- new one, so notifications can show the old and the new form. At most one live row per
-- (namespace, name). updater is the source that wrote it; NULL means the API.
CREATE TABLE vulnerability (
  id           bigserial PRIMARY KEY,
  namespace_id integer NOT NULL REFERENCES namespace (id),
  name         text NOT NULL,
  description  text NOT NULL DEFAULT '',
  link         text NOT NULL DEFAULT '',
  severity     severity NOT NULL,
  metadata     jsonb,
  updater      text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  deleted_at   timestamptz
);
CREATE UNIQUE INDEX vulnerability_live_name ON vulnerability (namespace_id, name) WHERE deleted_at IS NULL;
-- Paged listing of a namespace's live vulnerabilities in id order.
CREATE INDEX vulnerability_live_page ON vulnerability (namespace_id, id) WHERE deleted_at IS NULL;

-- The features that fix a vulnerability version. fixed_version NULL means "no fix yet" ("None"
-- on the wire): every version of the feature is affected.
CREATE TABLE vulnerability_fixedin (
  id               bigserial PRIMARY KEY,
  vulnerability_id bigint NOT NULL REFERENCES vulnerability (id) ON DELETE CASCADE,
  feature_id       integer NOT NULL REFERENCES feature (id),
  fixed_version    text,
  UNIQUE (vulnerability_id, feature_id)
);
CREATE INDEX vulnerability_fixedin_feature ON vulnerability_fixedin (feature_id, vulnerability_id);

-- vulnerability X affects feature version Y (installed < fixed under the namespace's format).
-- Kept up to date from both sides: new feature versions and new vulnerability versions. Rows of
-- superseded vulnerability versions stay, so a notification's Old side still lists its layers.
CREATE TABLE vulnerability_affects (
  vulnerability_id   bigint NOT NULL REFERENCES vulnerability (id) ON DELETE CASCADE,
  feature_version_id integer NOT NULL REFERENCES feature_version (id),
  fixedin_id         bigint NOT NULL REFERENCES vulnerability_fixedin (id) ON DELETE CASCADE,
  PRIMARY KEY (vulnerability_id, feature_version_id)
);
-- Layer report: the vulnerabilities of a set of feature versions.
CREATE INDEX vulnerability_affects_feature_version ON vulnerability_affects (feature_version_id, vulnerability_id);

-- A vulnerability change: Old = previous version (NULL for a new vulnerability), New = current
-- version (NULL for a deletion). Written in the transaction that made the change.
CREATE TABLE notification (
  id                     bigserial PRIMARY KEY,
  name                   text NOT NULL UNIQUE,
  created_at             timestamptz NOT NULL DEFAULT now(),
  notified_at            timestamptz,
  deleted_at             timestamptz,
  old_vulnerability_id   bigint REFERENCES vulnerability (id) ON DELETE CASCADE,
  new_vulnerability_id   bigint REFERENCES vulnerability (id) ON DELETE CASCADE,
  -- Delivery bookkeeping for the notifier: when to try next, and how many tries this round.
  next_delivery_at       timestamptz NOT NULL DEFAULT now(),
  delivery_attempts      integer NOT NULL DEFAULT 0,
  CHECK (old_vulnerability_id IS NOT NULL OR new_vulnerability_id IS NOT NULL)
);
CREATE INDEX notification_due ON notification (next_delivery_at) WHERE deleted_at IS NULL;
CREATE INDEX notification_read ON notification (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX notification_old_vulnerability ON notification (old_vulnerability_id);
CREATE INDEX notification_new_vulnerability ON notification (new_vulnerability_id);

-- Ancestry API: ancestries assembled, in order, from the scans of their layers.
CREATE TABLE ancestry (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ancestry_layer (
  ancestry_id   bigint NOT NULL REFERENCES ancestry (id) ON DELETE CASCADE,
  position      integer NOT NULL,
  layer_scan_id bigint NOT NULL REFERENCES layer_scan (id),
  PRIMARY KEY (ancestry_id, position)
);

-- The resolved features of an ancestry, each attributed to the layer position that introduced it.
CREATE TABLE ancestry_feature (
  ancestry_id        bigint NOT NULL REFERENCES ancestry (id) ON DELETE CASCADE,
  feature_version_id integer NOT NULL REFERENCES feature_version (id),
  position           integer NOT NULL,
  PRIMARY KEY (ancestry_id, feature_version_id)
);
-- Notification fan-out in the ancestry view: ancestries holding an affected feature version.
CREATE INDEX ancestry_feature_fan_out ON ancestry_feature (feature_version_id, ancestry_id);

-- Per-source updater state: conditional-fetch fingerprint and run bookkeeping.
CREATE TABLE updater_state (
  name            text PRIMARY KEY,
  fingerprint     text,
  last_attempt_at timestamptz,
  last_success_at timestamptz,
  last_error      text,
  record_count    integer NOT NULL DEFAULT 0
);

-- Cross-replica leases (updater runs, notification deliveries) with an expiry, so a replica that
-- dies does not hold work forever.
CREATE TABLE lock (
  name  text PRIMARY KEY,
  owner text NOT NULL,
  until timestamptz NOT NULL
);

-- Bumped after every committed change to vulnerabilities or layers: cached layer reports built at
-- an older generation are stale. A sequence, so writers never wait on each other to bump it.
CREATE SEQUENCE data_generation;

CREATE TABLE keyvalue (
  key   text PRIMARY KEY,
  value text NOT NULL
);
