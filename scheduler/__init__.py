"""The scheduler: ccbench's always-on process beside the API. It fires the campaigns'
occurrences when they are due (ccbench.campaigns.firing), sends queued runs to the workers
(ccbench.dispatch) and takes back the runs of dead workers (ccbench.reaper); workers do the
same in their upkeep thread, so it is optional on one machine and the one process a
deployment keeps running when no worker is."""
