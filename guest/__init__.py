"""pimcloud.guest"""
