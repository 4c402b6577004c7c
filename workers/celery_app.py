"""The workers' Celery application (configuration shared with producers: ccbench.jobs)."""

from ccbench.jobs import make_celery
from ccbench.settings import get_settings

app = make_celery(get_settings(), include=["workers.tasks"])
