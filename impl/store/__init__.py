"""Store: commit log, epoch file cache, disk."""
