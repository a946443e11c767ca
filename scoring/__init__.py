"""Scoring memory systems against a frozen TWIST Track B key (PROTOCOL.md §10). Pure: no database, no
Django models; key entries and predictions come in as plain records, numbers go out."""
