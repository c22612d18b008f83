-- An inclusive lower bound on a fixed-in entry (affected_from: this version and later ones are
-- affected), as OSV's ranges start at an `introduced` version. affected_above stays the exclusive
-- bound OVAL's `greater than` gives; an entry may carry either.
ALTER TABLE vulnerability_fixedin ADD COLUMN affected_from text;
