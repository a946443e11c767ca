from adjudication import key_admin  # noqa: F401  (gold keys and errata; issue 5)
