"""The Celery application. The database run row is the truth; Celery only carries run ids."""

from celery import Celery

from ccbench.settings import get_settings
from workers.queues import Queue


def make_celery() -> Celery:
    settings = get_settings()
    broker_url = settings.effective_broker_url
    if settings.is_embedded_broker:
        # kombu's SQLAlchemy transport passes transport options to create_engine (which
        # rejects unknown ones), so its polling interval is set on the transport class.
        from kombu.transport import sqlalchemy as kombu_sqla

        kombu_sqla.Transport.polling_interval = 0.1
        settings.state_dir.mkdir(parents=True, exist_ok=True)
    app = Celery("ccbench", broker=broker_url, include=["workers.tasks"])
    app.conf.update(
        task_default_queue=Queue.runs.value,
        task_ignore_result=True,
        result_backend=None,
        task_serializer="json",
        accept_content=["json"],
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=3,
        enable_utc=True,
    )
    return app


app = make_celery()
