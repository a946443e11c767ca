"""Scoring memory systems against a frozen TWIST Track B key (PROTOCOL.md §10).

metrics.py and parsing.py are pure (plain records in, numbers out; no database); models.py stores the
runs, services.py imports them, selectors.py turns stored predictions into reports, and
views.py, api.py and the score_* commands only format what those return."""
