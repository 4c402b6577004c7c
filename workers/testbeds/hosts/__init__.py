"""The `hosts` testbed: experiments between real machines reached over SSH, driven by the
playbooks in playbooks/ through ansible-runner (ansible.py)."""
