from django.utils import timezone

from annotation.models import Assignment, Campaign, Enrollment
from annotation.services import campaign_create


def test_author_creates_a_campaign_in_the_admin_through_the_same_service(client, twist_set, author, annotator_a, annotator_b):
    client.force_login(author)
    response = client.post("/admin/annotation/campaign/add/", {
        "slug": "from-admin", "name": "From the admin", "item_set": twist_set.pk,
        "annotators": [annotator_a.pk, annotator_b.pk], "per_item": 2, "seed": 7,
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(slug="from-admin")
    assert campaign.created_by == author and campaign.seed == 7
    assert Assignment.objects.filter(enrollment__campaign=campaign).count() == 12
    # the same seed through the service gives the same orders
    twin = campaign_create(slug="twin", item_set=twist_set, annotators=[annotator_a, annotator_b], seed=7)
    for pseudonym in ("A", "B"):
        orders = [
            list(Assignment.objects.filter(enrollment__campaign=c, enrollment__pseudonym=pseudonym)
                 .order_by("position").values_list("item_id", flat=True))
            for c in (campaign, twin)
        ]
        assert orders[0] == orders[1]


def test_admin_refuses_more_annotators_per_item_than_annotators(client, twist_set, author, annotator_a):
    client.force_login(author)
    response = client.post("/admin/annotation/campaign/add/", {
        "slug": "bad", "name": "", "item_set": twist_set.pk, "annotators": [annotator_a.pk], "per_item": 2,
    })
    assert response.status_code == 200 and not Campaign.objects.filter(slug="bad").exists()


def test_annotator_is_sent_to_the_admin_login(client, twist_campaign, annotator_a):
    client.force_login(annotator_a)
    for url in ("/admin/", "/admin/annotation/campaign/", f"/admin/annotation/campaign/{twist_campaign.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_without_the_author_role_cannot_see_campaigns_in_the_admin(client, twist_campaign, django_user_model):
    staff = django_user_model.objects.create_user("staffer", password="x", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/annotation/campaign/").status_code == 403


def test_an_author_who_annotates_a_campaign_is_not_shown_its_seed_in_the_admin(client, twist_set, author, annotator_a):
    # an explicit seed is the order: with it each position's item, and so its id, can be recomputed
    mine = campaign_create(slug="mine", item_set=twist_set, annotators=[author, annotator_a], seed=424242)
    other = campaign_create(slug="other", item_set=twist_set, annotators=[annotator_a], per_item=1, seed=515151)
    client.force_login(author)
    assert "424242" not in client.get(f"/admin/annotation/campaign/{mine.pk}/change/").content.decode()
    # 'other' is over the items the author has open work on in 'mine': blind there too
    assert "515151" not in client.get(f"/admin/annotation/campaign/{other.pk}/change/").content.decode()
    listing = client.get("/admin/annotation/campaign/").content.decode()
    assert "424242" not in listing and "mine" in listing
    Enrollment.objects.filter(campaign=mine, annotator=author).update(ended_at=timezone.now())
    assert "515151" in client.get(f"/admin/annotation/campaign/{other.pk}/change/").content.decode()
