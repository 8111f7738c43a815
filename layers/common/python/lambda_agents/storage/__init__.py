"""DynamoDB adapters: the only package that imports boto3."""
