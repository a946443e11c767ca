"""Keys are frozen from adjudicated campaigns: the key tests build on the adjudication fixtures."""

from tests.adjudication.conftest import *  # noqa: F403
