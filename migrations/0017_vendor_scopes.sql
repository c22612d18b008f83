-- Two sources read more of their documents, and rewrite their records once under the new reading:
-- their next run downloads everything again and writes no notifications (as in 0006).
-- - suse: SUSE's OVAL names some service-pack variants by a test of the plain release package
--   ("SUSE Linux Enterprise Server 15 SP1-BCL is installed" is `sles-release is ==15.1`), so their
--   fixes also hold on the plain service pack.
-- - rhel-vex: packages built in a module stream are now read, each scoped to its stream.
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name IN ('suse', 'rhel-vex') AND last_success_at IS NOT NULL;
