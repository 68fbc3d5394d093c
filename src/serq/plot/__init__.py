"""`serq plot`: figures of a sweep's table or of one run, as PNG or one HTML page."""
