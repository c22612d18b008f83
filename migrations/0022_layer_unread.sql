-- Files of a layer the application listers could not read (a manifest that does not parse, a
-- program or archive over the limits), each as {location, why}: shown with the images that hold the
-- layer, so that a package left unread is never taken for a package absent. At most the first 100
-- are kept; unread_count is how many there were.
ALTER TABLE layer_scan ADD COLUMN unread jsonb NOT NULL DEFAULT '[]', ADD COLUMN unread_count integer NOT NULL DEFAULT 0;
