"""The `hosts` testbed: experiments between real machines reached over SSH, driven by the
playbooks in playbooks/ through ansible-runner: `backend.py` (HostsTestbed: one run),
`ansible.py` (probe, provision, trial, cleanup), `playbook.py` (running one play),
`inventory.py` (hosts as plain data), `errors.py` (failures naming the host)."""
