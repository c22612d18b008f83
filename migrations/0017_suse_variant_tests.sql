-- SUSE's OVAL names some service-pack variants by a test of the plain release package
-- ("SUSE Linux Enterprise Server 15 SP1-BCL is installed" is `sles-release is ==15.1`), so their
-- fixes also hold on the plain service pack. The SUSE source rewrites its records once under that
-- reading: its next run downloads everything again and writes no notifications (as in 0006).
UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true
WHERE name = 'suse' AND last_success_at IS NOT NULL;
