"""What several API handlers share and no one API owns: authorization, ACL wire
fields, config changes, offset commits, the share RPCs' common responses and
validation, replica assignments, delegation tokens. No module here registers an API.
"""
