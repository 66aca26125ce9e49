#!/bin/sh
# One image, four roles. Usage: docker-entrypoint.sh api|worker|beat|migrate [extra args]
# Anything else is run as a command (e.g. `gin-service api-key create op_...`).
set -eu

role="${1:-api}"
[ "$#" -gt 0 ] && shift
# The HEALTHCHECK reads the role the container runs (it cannot see this process's arguments).
echo "$role" > "${GIN_ROLE_FILE:-/tmp/gin-role}" 2>/dev/null || true

case "$role" in
  api)
    exec gunicorn -c /app/deploy/gunicorn.conf.py "$@" service.wsgi:app ;;
  worker)
    exec celery -A worker.celery_app worker --loglevel "${CELERY_LOG_LEVEL:-INFO}" "$@" ;;
  beat)
    exec celery -A worker.celery_app beat --loglevel "${CELERY_LOG_LEVEL:-INFO}" \
      --schedule "${GIN_VAR_DIR:-/app/var}/celerybeat-schedule" "$@" ;;
  migrate)
    exec gin-service db upgrade "$@" ;;
  *)
    exec "$role" "$@" ;;
esac
