# Source on a lent GPU machine, from the repository root, with the wheels of
# `python benchmarks/device/device_wheels.py --out .whl` carried: installs them once per machine
# into /tmp/site (the image's own packages are never replaced) and puts this checkout's kernelevolve
# and a `kernelevolve` command on the paths.
#
#     source benchmarks/device/device_env.sh && kernelevolve bench ... --target cuda
if [ ! -f /tmp/site/.kernelevolve-wheels ] || [ -d .whl ]; then
    if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl 2>&1 | grep -v "^WARNING: Target directory" || true
        touch /tmp/site/.kernelevolve-wheels
    fi
fi
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}
mkdir -p /tmp/bin
printf '#!/bin/sh\nexec python3 -m kernelevolve.cli "$@"\n' > /tmp/bin/kernelevolve
chmod +x /tmp/bin/kernelevolve
export PATH=/tmp/bin:$PATH
export PYTHONUNBUFFERED=1
