#!/bin/sh
# mpirun's launch agent for the multihost tests (--mca plm_rsh_agent), used instead of ssh: mpirun
# calls it as `agent HOST COMMAND...` to start its daemon on HOST. HOST is one of the addresses in
# the test's hostfile; TESSERA_NETNS_MAP ("ADDR=NAMESPACE ADDR=NAMESPACE ...", set by netns.py)
# says which network namespace has it. Like ssh, the words are joined and run by a shell: mpirun
# sends a command line ("PATH=... ; export PATH ; ... orted ..."). Each namespace also gets its own
# UTS namespace and host name, so the daemons see as many distinct hosts as a real cluster would.
host=$1
shift
for pair in $TESSERA_NETNS_MAP; do
  if [ "${pair%%=*}" = "$host" ]; then
    ns=${pair#*=}
    exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns && $*"
  fi
done
echo "netns_rsh_agent: no namespace for host '$host' in TESSERA_NETNS_MAP='$TESSERA_NETNS_MAP'" >&2
exit 255
