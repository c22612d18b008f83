-- What a source says of a fixed-in entry beyond fixed (a version) and affected (none): it will not
-- be fixed, its fix is deferred, or the package is not affected (VEX). NULL: implied by
-- fixed_version. A not_affected entry affects no version of its feature.
ALTER TABLE vulnerability_fixedin
  ADD COLUMN fix_state text CHECK (fix_state IN ('will_not_fix', 'fix_deferred', 'not_affected'));

-- The sources that now give fix states (Debian, Ubuntu, Red Hat OVAL v2) rewrite their records
-- once: their next run downloads everything again (no fingerprint) and writes no notifications,
-- as a state the new parser adds to an unchanged advisory is not news to anyone.
ALTER TABLE updater_state ADD COLUMN quiet_next_run boolean NOT NULL DEFAULT false;
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name IN ('debian', 'ubuntu', 'rhel') AND last_success_at IS NOT NULL;
