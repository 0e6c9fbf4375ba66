"""Spark-distributed fuzz campaigns over the deterministic simulator."""
