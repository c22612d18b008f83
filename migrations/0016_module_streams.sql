-- Red Hat's OVAL scopes a module stream's advisories to that stream ("Module idm:DL1 is enabled"):
-- a fixed-in entry may name the module stream it applies to (module, name:stream; NULL: it applies
-- to packages built outside any module).
ALTER TABLE vulnerability_fixedin ADD COLUMN module text;

-- The module stream an installed package was built in (its rpm modularity label's name:stream),
-- where the namespace's records are scoped by module stream (RHEL); '' for a package built outside
-- any module, everywhere else, and for rpm layers indexed before this, which are matched as before
-- until they are indexed again. Part of the key, as the architectures are: what a version is matched
-- with is what the layer that listed it says.
ALTER TABLE feature_version
  ADD COLUMN module text NOT NULL DEFAULT '',
  DROP CONSTRAINT feature_version_feature_id_version_arches_key,
  ADD CONSTRAINT feature_version_feature_id_version_arches_module_key UNIQUE (feature_id, version, arches, module);
ALTER TABLE layer_scan_package ADD COLUMN module text;

-- Red Hat's OVAL source rewrites its records once, now with the module streams' entries it used to
-- leave out: its next run downloads everything again and writes no notifications (as in 0006).
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name = 'rhel' AND last_success_at IS NOT NULL;
