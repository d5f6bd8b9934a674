"""Shards to the long table to the point table: reading and migrating shards, replicates
combined into points, hardware peaks, and the key lists every report groups by."""
