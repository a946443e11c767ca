"""The Lapse wing scores through council members, so its tests share the council's fixtures."""

from tests.council.conftest import fake_llm, fast_password_hashing  # noqa: F401
