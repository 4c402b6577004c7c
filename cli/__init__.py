"""`ccbench`, the command-line app: runs the embedded stack and the production processes, admin
tasks on the database, and everything else as a client of the REST API."""
