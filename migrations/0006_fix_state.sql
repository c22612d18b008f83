-- What a source says of a fixed-in entry beyond fixed (a version) and affected (none): it will not
-- be fixed, its fix is deferred, or the package is not affected (VEX). NULL: implied by
-- fixed_version. A not_affected entry affects no version of its feature.
ALTER TABLE vulnerability_fixedin
  ADD COLUMN fix_state text CHECK (fix_state IN ('will_not_fix', 'fix_deferred', 'not_affected'));
