"""Thin AWS adapters: each translates one table, queue or bucket into domain calls (aiobotocore)."""
