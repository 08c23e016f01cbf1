"""The cluster metadata and configs the broker keeps: ACLs, client quotas, SCRAM
credentials, group configs, dynamic broker configs, client-metrics and logger
resources, config resources as the admin APIs show them, features and the quorum.
"""
