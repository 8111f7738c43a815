"""/var/runtime/bootstrap.py: the managed Python runtime's start, before awslambdaric takes over.

Lambda's module search path for python3.13, in order: the function's code (LAMBDA_TASK_ROOT), the
layers' /opt/python/lib/python3.13/site-packages and /opt/python, the runtime's site-packages,
this folder (awslambdaric), then the standard library. Both code folders are also site
directories (their .pth files are read), and child processes get PYTHONPATH=/var/runtime. A
PYTHONPATH set on the function replaces the layer folders, as in Lambda.
"""

import os
import site
import sys

import awslambdaric.__main__ as runtime_interface_client


def main() -> None:
    task_root = os.environ["LAMBDA_TASK_ROOT"]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    layer_site_packages = f"/opt/python/lib/{version}/site-packages"
    own_pythonpath = "PYTHONPATH" in os.environ
    if not own_pythonpath:
        sys.path[0:0] = [layer_site_packages, "/opt/python", f"/var/lang/lib/{version}/site-packages"]
    sys.path.insert(0, task_root)
    site.addsitedir(task_root)
    if not own_pythonpath:
        site.addsitedir(layer_site_packages)
        site.addsitedir("/opt/python")
        os.environ["PYTHONPATH"] = os.environ["LAMBDA_RUNTIME_DIR"]
    runtime_interface_client.main([task_root, os.environ["_HANDLER"]])


if __name__ == "__main__":
    main()
