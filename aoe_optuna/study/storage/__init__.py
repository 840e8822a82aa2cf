"""Opening a storage and keeping it sound: URLs, file kinds, the Journal lock, write-once keys."""
