"""SIA (anticipatory sharing of idle pool quota) and the baselines it is compared with.

Queues are `quota` pools sharing one physical cluster; each module here is one policy of
SIA §4.1, §5.1 and §5.3 (fcfs-pools, ssf, gssf, maxmin, sia-vc, sia).
"""
