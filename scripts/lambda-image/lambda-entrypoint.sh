#!/bin/sh
# The image's entry point, as in AWS's base images: `docker run <image> app.lambda_handler` runs the
# function behind aws-lambda-rie (the SAM CLI sets its own entry point, /var/rapid/aws-lambda-rie).
if [ $# -ne 1 ]; then
  echo "entrypoint requires the handler name to be the first argument" 1>&2
  exit 142
fi
export _HANDLER="$1"
if [ -z "${AWS_LAMBDA_RUNTIME_API}" ]; then
  exec /usr/local/bin/aws-lambda-rie /var/runtime/bootstrap
fi
exec /var/runtime/bootstrap
